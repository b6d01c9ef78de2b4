"""A 5 × 7 bitmap font for scenes that spell text (the spelling demos of Twigg & James 2008 §5).

:func:`text_pixels` turns a string into the (row, column) cells of its lit pixels, row 0 at the
top; scene scripts place one bin of balls, or one box, per lit cell (:func:`centred_cells` lays
the cells out on a grid centred on the origin). Upper-case letters, digits,
space and ``. , ! ? - + = : ' / < >`` and the arrow ``→`` are drawn; lower-case letters are drawn
as upper case except ``t`` (the ``t → −t`` demo), and ``−`` (U+2212) as ``-``.
"""

from __future__ import annotations

__all__ = ["GLYPH_WIDTH", "GLYPH_HEIGHT", "GLYPHS", "text_pixels", "text_grid", "centred_cells"]

#: Glyph size in cells; glyphs are set one blank column apart.
GLYPH_WIDTH = 5
GLYPH_HEIGHT = 7

_RAW = {
    "A": (".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "B": ("####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."),
    "C": (".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."),
    "D": ("####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."),
    "E": ("#####", "#....", "#....", "####.", "#....", "#....", "#####"),
    "F": ("#####", "#....", "#....", "####.", "#....", "#....", "#...."),
    "G": (".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"),
    "H": ("#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"),
    "I": (".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "J": ("..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."),
    "K": ("#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"),
    "L": ("#....", "#....", "#....", "#....", "#....", "#....", "#####"),
    "M": ("#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"),
    "N": ("#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"),
    "O": (".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "P": ("####.", "#...#", "#...#", "####.", "#....", "#....", "#...."),
    "Q": (".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"),
    "R": ("####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"),
    "S": (".####", "#....", "#....", ".###.", "....#", "....#", "####."),
    "T": ("#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."),
    "U": ("#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."),
    "V": ("#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."),
    "W": ("#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."),
    "X": ("#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"),
    "Y": ("#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."),
    "Z": ("#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"),
    "0": (".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."),
    "1": ("..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."),
    "2": (".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"),
    "3": ("####.", "....#", "....#", ".###.", "....#", "....#", "####."),
    "4": ("...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."),
    "5": ("#####", "#....", "####.", "....#", "....#", "#...#", ".###."),
    "6": (".###.", "#....", "#....", "####.", "#...#", "#...#", ".###."),
    "7": ("#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."),
    "8": (".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."),
    "9": (".###.", "#...#", "#...#", ".####", "....#", "....#", ".###."),
    " ": (".....",) * 7,
    ".": (".....", ".....", ".....", ".....", ".....", ".##..", ".##.."),
    ",": (".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."),
    "!": ("..#..", "..#..", "..#..", "..#..", "..#..", ".....", "..#.."),
    "?": (".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."),
    "-": (".....", ".....", ".....", "#####", ".....", ".....", "....."),
    "+": (".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."),
    "=": (".....", ".....", "#####", ".....", "#####", ".....", "....."),
    ":": (".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."),
    "'": ("..#..", "..#..", ".#...", ".....", ".....", ".....", "....."),
    "/": ("....#", "....#", "...#.", "..#..", ".#...", "#....", "#...."),
    "<": ("...#.", "..#..", ".#...", "#....", ".#...", "..#..", "...#."),
    ">": (".#...", "..#..", "...#.", "....#", "...#.", "..#..", ".#..."),
    "→": (".....", "...#.", "....#", "#####", "....#", "...#.", "....."),
    "t": (".#...", ".#...", "####.", ".#...", ".#...", ".#..#", "..##."),
}

#: Lit cells of each glyph: a tuple of 7 strings of 5 characters, '#' lit.
GLYPHS: dict[str, tuple[str, ...]] = dict(_RAW)
for _k, _g in _RAW.items():
    assert len(_g) == GLYPH_HEIGHT and all(len(r) == GLYPH_WIDTH for r in _g), _k


def _glyph(ch: str) -> tuple[str, ...]:
    if ch == "−":
        ch = "-"
    if ch in GLYPHS:
        return GLYPHS[ch]
    if ch.upper() in GLYPHS:
        return GLYPHS[ch.upper()]
    raise ValueError(
        f"character {ch!r} is not in the bitmap font; available: {''.join(sorted(GLYPHS))}"
    )


def text_pixels(text: str, spacing: int = 1, line_spacing: int = 2) -> list[tuple[int, int]]:
    """Lit cells of ``text`` as (row, column), row 0 at the top, in reading order.

    Parameters
    ----------
    text : str
        The text; ``\\n`` starts a new line.
    spacing : int
        Blank columns between glyphs.
    line_spacing : int
        Blank rows between lines.

    Raises
    ------
    ValueError
        A character the font does not have (the message lists those it has).
    """
    cells = []
    for line_no, line in enumerate(text.split("\n")):
        top = line_no * (GLYPH_HEIGHT + line_spacing)
        for k, ch in enumerate(line):
            glyph = _glyph(ch)
            left = k * (GLYPH_WIDTH + spacing)
            for r, row in enumerate(glyph):
                for c, cell in enumerate(row):
                    if cell == "#":
                        cells.append((top + r, left + c))
    return cells


def text_grid(text: str) -> tuple[list[tuple[int, int]], int, int]:
    """Lit cells of ``text`` (:func:`text_pixels`) and the size of the grid they span.

    Returns
    -------
    cells : list of (int, int)
        (row, column) of each lit cell, in reading order.
    rows, cols : int
        One more than the largest row and column.

    Raises
    ------
    ValueError
        The text has no lit cell (blank), or a character the font does not have.
    """
    cells = text_pixels(text)
    if not cells:
        raise ValueError(f"text {text!r} has no lit cells")
    rows = max(r for r, _ in cells) + 1
    cols = max(c for _, c in cells) + 1
    return cells, rows, cols


def centred_cells(
    text: str, pitch: float
) -> tuple[list[tuple[int, int]], list[tuple[float, float]]]:
    """Lit cells of ``text`` and their centres ``(x, y)``, m, on a grid of spacing ``pitch`` (m)
    centred on the origin: columns along +x, font row 0 at the top (largest y).

    Returns
    -------
    cells : list of (int, int)
        As in :func:`text_grid`.
    centres : list of (float, float)
        The centre of each cell, in the same order.
    """
    cells, rows, cols = text_grid(text)
    x0 = -0.5 * (cols - 1) * pitch
    y0 = 0.5 * (rows - 1) * pitch
    return cells, [(x0 + c * pitch, y0 - r * pitch) for r, c in cells]

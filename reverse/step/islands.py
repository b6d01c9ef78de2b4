"""Which bodies a step moves: islands, sleeping, and the free-to-bounce test and attraction of
Twigg & James 2008 [1]_ §4 "Stacking".

Islands and sleeping
--------------------
Union-find over moving bodies linked by contacts or joints; static bodies do not merge islands
(§3.3 "one LCP per island"). A body at rest (speeds below δ) without goals whose neighbours are
all at rest is *asleep*: the scene says it is at rest, so it is presumed supported and is not
stepped (its island "at rest with no goals" skips the solve). An awake body touching a sleeping
one sees it as static. A body at rest with no contact and no joint is never asleep (gravity
moves it). With the attraction of §4 "Stacking", a constrained body at rest on an attracting
contact is *held*: moving neighbours and goals on their contacts with it do not wake it.

References
----------
.. [1] Twigg & James, Backward Steps in Rigid Body Simulation, ACM TOG 27(3) 25, 2008.
"""

from __future__ import annotations

import numpy as np

from reverse.step.dynamics import ContactSet, Goals

__all__ = [
    "FREE_DOT",
    "find_islands",
    "island_arrays",
    "awake_bodies",
    "free_bodies",
    "between_held",
]

#: Free-to-bounce test (§4 "Stacking"): two contact normals of a body "oppose" when their dot
#: product is below this. The paper asks for positive dot products; −1e-9 instead of 0 keeps
#: exactly perpendicular normals (a box in a corner: floor and wall) from flipping on round-off —
#: they do not oppose, so such a body stays free.
FREE_DOT = -1e-9


def _pair_array(pairs) -> np.ndarray:
    """``pairs`` (a list of index pairs or an (m, 2) array) as an (m, 2) int array."""
    arr = np.asarray(pairs, dtype=int)
    return arr.reshape(-1, 2)


def find_islands(n: int, awake: np.ndarray, pairs) -> list[np.ndarray]:
    """Connected components of the awake bodies linked by ``pairs`` (body index pairs, a list
    or an (m, 2) array; −1 and sleeping or static bodies do not link), each sorted, the
    components ordered by their smallest body (the same islands in the same order as the
    union-find it replaced): slices of :func:`island_arrays`' ``members``."""
    members, sizes = island_arrays(n, awake, pairs)
    if not sizes.size:
        return []
    ends = np.cumsum(sizes).tolist()
    # slices of one array (np.split costs ~4× as much per island)
    return [members[i:j] for i, j in zip([0, *ends[:-1]], ends, strict=True)]


def island_arrays(n: int, awake: np.ndarray, pairs) -> tuple[np.ndarray, np.ndarray]:
    """:func:`find_islands` as two arrays: ``members`` (int64), the islands' bodies island
    after island (each island's ascending, islands ordered by their smallest body), and
    ``sizes``, the bodies of each island (the stepper uses these, not a list of arrays).

    Components by minimum-label propagation with pointer jumping, vectorized over the links:
    every body points to a body of its component with a smaller or equal index; each pass
    lowers both ends of every link to the smaller of their labels and then jumps
    (``label ← label[label]``), until nothing changes — then each component's label is its
    smallest body (it cannot point lower). A pass costs a few numpy calls over the links and
    the passes grow with the logarithm of an island's diameter (3–5 on the spelling scenes'
    islands); scipy's ``connected_components`` with its sparse-matrix set-up cost about 4× as
    much per step there. Integer work only: the islands are exactly the union-find's."""
    awake = np.asarray(awake, dtype=bool)
    P = _pair_array(pairs)
    a, b = P[:, 0], P[:, 1]
    link = (a >= 0) & (b >= 0)
    link[link] = awake[a[link]] & awake[b[link]]
    a, b = a[link], b[link]
    label = np.arange(n, dtype=np.int64)
    while a.size:
        low = np.minimum(label[a], label[b])
        new = label.copy()
        np.minimum.at(new, a, low)
        np.minimum.at(new, b, low)
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    members = np.flatnonzero(awake).astype(np.int64)
    if not members.size:
        return members, np.zeros(0, dtype=np.int64)
    key = label[members]
    order = np.argsort(key, kind="stable")  # members ascending within each component
    members, key = members[order], key[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sizes = np.diff(np.r_[starts, members.size])
    return members, sizes


def awake_bodies(
    moving: np.ndarray,
    velocity: np.ndarray,
    contacts: ContactSet,
    pairs,
    joint_pairs,
    goals: Goals,
    glued: np.ndarray,
    *,
    delta: float,
    delta_angular: float,
    sleep: bool = True,
) -> np.ndarray:
    """Bodies that take part in a step (module docstring), shape (n,) bool.

    Parameters
    ----------
    moving : ndarray of bool, shape (n,)
        Bodies that are not static.
    velocity : ndarray, shape (n, 6)
        Linear (m/s) and angular (rad/s) velocities.
    contacts : ContactSet
        The step's contacts; ``pairs`` are their ``(body_a, body_b)`` (−1: the world), a list
        of pairs or an (m, 2) array.
    joint_pairs : list of (int, int) or ndarray
        Bodies linked by joints.
    goals : Goals
        Goal velocities of the contacts (a contact with a goal wakes its bodies).
    glued : ndarray of bool, shape (n_contacts,)
        Attracting contacts (§4 "Stacking").
    delta, delta_angular : float
        Rest thresholds, m/s and rad/s.
    sleep : bool
        False: every moving body is awake.
    """
    n = moving.size
    speed = np.linalg.norm(velocity[:, :3], axis=1)
    spin = np.linalg.norm(velocity[:, 3:], axis=1)
    active = moving & ((speed > delta) | (spin > delta_angular))
    has_goal = goals.per_contact()
    # §4 "Stacking" with attraction: a body at rest on an attracting contact is held there
    # (glue: v_n and v_t at their goals). Pushes from free bodies and goals on their contacts
    # do not wake it — it is static for their island, which is what the glue would give it
    # (zero velocity) without a degenerate LCP of every glued row in the stack below; only
    # a moving body it is glued to, or a goal on a glued contact, wakes it.
    held = np.zeros(n, dtype=bool)
    if sleep and glued.any():
        for col in (contacts.body_a[glued], contacts.body_b[glued]):
            held[col[col >= 0]] = True
        held &= moving & ~active
    P = _pair_array(pairs)
    JP = _pair_array(joint_pairs)
    glued = np.asarray(glued, dtype=bool)
    touched = np.zeros(n, dtype=bool)
    woken = np.zeros(n, dtype=bool)  # (each update below only reads `held`, `moving`: any order)
    for col in (P[:, 0], P[:, 1]):
        ok = col >= 0
        body = col[ok]
        touched[body] = True
        wake = has_goal[ok] & moving[body] & (glued[ok] | ~held[body])
        woken[body[wake]] = True
    active |= woken
    for col in (JP[:, 0], JP[:, 1]):
        touched[col[col >= 0]] = True
    active |= moving & ~touched
    if not sleep:
        active = moving.copy()
    awake = active.copy()
    links = np.concatenate([P, JP])
    lg = np.concatenate([glued, np.ones(len(JP), dtype=bool)])
    both = (links[:, 0] >= 0) & (links[:, 1] >= 0)
    a, b, gl = links[both, 0], links[both, 1], lg[both]
    awake[b[active[a] & moving[b] & (gl | ~held[b])]] = True
    awake[a[active[b] & moving[a] & (gl | ~held[a])]] = True
    return awake


def free_bodies(contacts: ContactSet, n: int) -> np.ndarray:
    """Free-to-bounce test of Twigg & James §4 "Stacking", shape (n,) bool.

    A body is free when every pair of its contact normals (each pointing into the body) has a
    positive dot product (above :data:`FREE_DOT`); a body with opposing normals — pressed from
    two sides, like a block inside a stack — is constrained. Bodies without contacts are free.
    """
    free = np.ones(n, dtype=bool)
    nc = len(contacts)
    if nc < 2:
        return free
    into = np.concatenate([contacts.normal, -contacts.normal])  # into A; into B
    owner = np.concatenate([contacts.body_a, contacts.body_b])
    ok = owner >= 0
    into, owner = into[ok], owner[ok]
    order = np.argsort(owner, kind="stable")
    into, owner = into[order], owner[order]
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    sizes = np.diff(np.r_[starts, owner.size])
    # every ordered pair (i, j) of contacts of one body, all bodies at once: i is each contact
    # repeated by its body's count, j runs over that body's contacts
    g = np.repeat(sizes, sizes)  # contacts of each contact's body
    s0 = np.repeat(starts, sizes)  # first contact of each contact's body
    i = np.repeat(np.arange(owner.size), g)
    j = np.repeat(s0, g) + (np.arange(i.size) - np.repeat(np.cumsum(g) - g, g))
    dots = np.einsum("ij,ij->i", into[i], into[j])
    free[owner[i[dots < FREE_DOT]]] = False
    return free


def between_held(contacts: ContactSet, held: np.ndarray, moving: np.ndarray) -> np.ndarray:
    """Contacts whose participants are all held (``held``: constrained bodies at rest) or
    static.

    The attraction of §4 "Stacking" acts between *stacked* bodies — constrained and at rest —
    and on their supports, never on a contact with a free body (a free block resting on the
    stack must stay able to leave, and, leaving, pushes on the stack below, which its own
    attracting contacts hold) nor with a moving one (two bricks that touch in flight while
    pressed from both sides are not a stack: glued, they would spin up together)."""
    a, b = contacts.body_a, contacts.body_b

    def ok(col):
        k = np.maximum(col, 0)
        return (col < 0) | ~moving[k] | held[k]

    return ok(a) & ok(b)

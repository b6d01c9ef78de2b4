"""Is there a display the PyBullet viewer can open? Asked before PyBullet is, because on Linux
``p.connect(p.GUI)`` without a working X server does not fail: it prints "cannot connect to X
server" and hangs, deaf to Ctrl-C (docs/architecture.md, "PyBullet facts").

:func:`display_problem` connects to the X server ``DISPLAY`` names and sends the X11 connection
setup request, with the display's MIT-MAGIC-COOKIE-1 from ``XAUTHORITY`` as libxcb would, and
wants Success back within :data:`DISPLAY_TIMEOUT`. :func:`held_display` asks the same and keeps the
connection open while the viewer starts: an X server with no client left resets, and refuses
connections while it does. Pure standard library.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from pathlib import Path

__all__ = ["display_problem", "held_display", "DISPLAY_TIMEOUT", "LOCAL_DISPLAY_TIMEOUT"]

#: How long to wait for an X server to accept a connection and answer its setup request, s,
#: before calling it unreachable (a local Xvfb answers in about a millisecond).
DISPLAY_TIMEOUT = 1.0

#: The same for a local display's socket (``/tmp/.X11-unix/XN``), s, where only an X server
#: listens: one that is resetting (its last client just left, e.g. the previous viewer) accepts
#: at once and answers when the reset is done, which took more than 1 s with the machine's two
#: cores busy (load 12: test_replay_under_xvfb's second replay was refused).
LOCAL_DISPLAY_TIMEOUT = 5.0

#: First byte of an X server's answer to the connection setup request (X11 protocol,
#: "Connection Setup"): Failed, Success, Authenticate.
_X_FAILED, _X_SUCCESS, _X_AUTHENTICATE = 0, 1, 2

#: What :func:`_x_answer` returns when the server closes the connection without an answer.
_HUNG_UP = -1

#: Pause before asking again an X server that closed the connection unanswered, s: Xvfb does
#: so while it resets (the viewer's process ending was its last client), which took 0.02 to
#: 0.06 s on an idle machine (12 replays in a row); asked again until the display's timeout.
_RESET_PAUSE = 0.02

#: Xauthority address families (Xauth.h): an IPv4 address, the local host by name, any address.
_FAMILY_INTERNET, _FAMILY_LOCAL, _FAMILY_WILD = 0, 256, 65535

#: The only authorization protocol :func:`display_problem` sends (XDM-AUTHORIZATION-1 needs
#: DES; Xlib then falls back to this one or to none, as servers of today accept).
_COOKIE_NAME = b"MIT-MAGIC-COOKIE-1"


def display_problem(env: dict | None = None) -> str | None:
    """Why the viewer could not open a window, or None when it can (or we cannot tell).

    On Linux PyBullet's GUI needs an X server, and ``p.connect(p.GUI)`` without one does not fail:
    it prints "cannot connect to X server" and hangs, deaf to Ctrl-C. So before connecting, the
    X server named by ``DISPLAY`` (``[host]:N[.screen]``) is asked for a connection as Xlib asks
    for it: the socket ``/tmp/.X11-unix/XN`` (and its abstract twin) for a local display, TCP
    port 6000 + N on ``host`` otherwise. On the socket goes the X11 connection setup request with
    the display's MIT-MAGIC-COOKIE-1 from ``XAUTHORITY`` (default ``~/.Xauthority``) when it has
    one (:func:`_setup_request`); the first byte of the answer must come within
    :data:`DISPLAY_TIMEOUT` (:data:`LOCAL_DISPLAY_TIMEOUT` on a local socket) and be 1 (Success). A
    socket that accepts but does not answer as an X server (anything listening on the port, a
    firewall that accepts every connection) is a problem, and so is an X server that refuses us (0
    Failed, 2 Authenticate): PyBullet, which connects the same way, would be refused too. A
    connection closed unanswered is made again until that timeout: an X server does so while it
    resets, after its last client (the previous viewer) left. Other systems need no
    ``DISPLAY``.
    """
    problem, connection = _probe(env)
    if connection is not None:
        connection.close()
    return problem


@contextlib.contextmanager
def held_display(env: dict | None = None):
    """:func:`display_problem`'s answer, with the connection that got it held open until the
    ``with`` block ends.

    An X server whose last client disconnects resets (X11's "server reset", the default of Xorg
    and Xvfb; ``-noreset`` turns it off), and a connection that comes while it resets fails.
    When the probe of :func:`display_problem` is the display's only client (a fresh Xvfb, as
    ``xvfb-run`` starts), closing it before PyBullet connects starts that reset; PyBullet's GUI
    thread then gets no display, prints "cannot connect to X server" and calls ``exit``, which
    hangs for good while the main thread holds the GIL (HDF5's exit handler waits for it).
    Measured under two busy loops on two cores: 7 of 42 ``workbench replay`` starts hung so. Held
    until the viewer's own connection is up, the probe keeps the server from resetting.
    """
    problem, connection = _probe(env)
    try:
        yield problem
    finally:
        if connection is not None:
            connection.close()


def _probe(env: dict | None) -> tuple[str | None, socket.socket | None]:
    """:func:`display_problem`'s answer, and the open connection to the X server when there is
    no problem and one was made (None on other systems)."""
    if not sys.platform.startswith("linux"):
        return None, None
    env = os.environ if env is None else env
    display = env.get("DISPLAY", "")
    if not display:
        return "no display: DISPLAY is not set", None
    host, _, rest = display.rpartition(":")
    number = rest.split(".")[0]
    if not number.isdigit():
        return f"no display: DISPLAY={display!r} is not of the form [host]:N", None
    if host in ("", "unix"):
        addresses = [(socket.AF_UNIX, f"/tmp/.X11-unix/X{number}")]
        addresses.append((socket.AF_UNIX, f"\0/tmp/.X11-unix/X{number}"))  # abstract socket
    else:
        addresses = [(socket.AF_INET, (host, 6000 + int(number)))]
    for family, address in addresses:
        timeout = LOCAL_DISPLAY_TIMEOUT if family == socket.AF_UNIX else DISPLAY_TIMEOUT
        deadline = time.monotonic() + timeout
        while True:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(max(deadline - time.monotonic(), 1e-3))
            try:
                sock.connect(address)
            except OSError:
                sock.close()
                sock = None
                break  # nothing there: try the next address
            try:
                peer = sock.getpeername()[0] if family == socket.AF_INET else None
                request = _setup_request(_xauth_cookie(env, number, peer))
                answer = _x_answer(sock, request, deadline)
            except BaseException:
                sock.close()
                raise
            if answer != _HUNG_UP or time.monotonic() + _RESET_PAUSE >= deadline:
                break
            # closed unanswered: an X server resetting (its last client just left, e.g. the
            # previous viewer's process) accepts and drops connections until it is done
            sock.close()
            time.sleep(_RESET_PAUSE)
        if sock is None:
            continue
        if answer == _X_SUCCESS:
            try:
                glx = _has_extension(sock, b"GLX", time.monotonic() + timeout)
            except BaseException:
                sock.close()
                raise
            if glx is False:
                sock.close()
                return (
                    f"no OpenGL: the X server of DISPLAY={display!r} has no GLX extension, "
                    "which PyBullet's viewer draws with"
                ), None
            return None, sock
        sock.close()
        if answer in (_X_FAILED, _X_AUTHENTICATE):
            return (
                f"no display: the X server of DISPLAY={display!r} refused the connection "
                "(not authorized: see XAUTHORITY and xhost)"
            ), None
        return (
            f"no display: DISPLAY={display!r} accepts connections but does not answer as an X "
            "server"
        ), None
    return f"no display: cannot connect to the X server of DISPLAY={display!r}", None


def _setup_request(cookie: tuple[bytes, bytes] | None) -> bytes:
    """The X11 connection setup request (X11 protocol, "Connection Setup"), little-endian.

    Byte order ``'l'``, one unused byte, protocol major version 11 and minor 0 (CARD16 each),
    the lengths of the authorization protocol's name and data (CARD16 each), two unused bytes;
    then the name and the data, each padded to a multiple of 4 bytes. ``cookie`` is
    ``(name, data)``, or None to send no authorization.
    """
    name, data = cookie or (b"", b"")
    head = b"l\0" + (11).to_bytes(2, "little") + (0).to_bytes(2, "little")
    head += len(name).to_bytes(2, "little") + len(data).to_bytes(2, "little") + bytes(2)
    return head + name + bytes(-len(name) % 4) + data + bytes(-len(data) % 4)


def _xauth_cookie(env, number: str, peer: str | None) -> tuple[bytes, bytes] | None:
    """The MIT-MAGIC-COOKIE-1 for display ``number`` in the Xauthority file (``XAUTHORITY``,
    else ``~/.Xauthority``), chosen as libxcb chooses it: an entry of the display's number (or
    of any number) whose address is the local host by name for a Unix socket or a loopback
    ``peer``, the ``peer``'s IPv4 address otherwise, or any address (FamilyWild). None when the
    file or such an entry is missing.

    The file is a sequence of entries: family (CARD16, big-endian), then address, display
    number, protocol name and data, each a CARD16 length and that many bytes (Xau's format).
    """
    path = env.get("XAUTHORITY") or os.path.join(
        env.get("HOME") or os.path.expanduser("~"), ".Xauthority"
    )
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return None
    wanted = {(_FAMILY_LOCAL, socket.gethostname().encode())}
    if peer is not None and not peer.startswith("127."):
        with contextlib.suppress(OSError):
            wanted = {(_FAMILY_INTERNET, socket.inet_aton(peer))}
    pos = 0
    while pos + 2 <= len(raw):
        family = int.from_bytes(raw[pos : pos + 2], "big")
        pos += 2
        fields = []
        for _ in range(4):
            n = int.from_bytes(raw[pos : pos + 2], "big")
            fields.append(raw[pos + 2 : pos + 2 + n])
            pos += 2 + n
        if pos > len(raw):
            return None  # truncated file
        address, entry_number, name, data = fields
        if (
            name == _COOKIE_NAME
            and entry_number in (b"", number.encode())
            and (family == _FAMILY_WILD or (family, address) in wanted)
        ):
            return name, data
    return None


#: Opcode of the core request QueryExtension (X11 protocol, "QueryExtension").
_X_QUERY_EXTENSION = 98


def _has_extension(sock: socket.socket, name: bytes, deadline: float) -> bool | None:
    """Whether the X server on ``sock``, which has just answered Success (its first byte read),
    has the extension ``name``: True or False by its answer to QueryExtension, None when that
    cannot be told before ``deadline`` (a reply cut short, an Error instead of a reply).

    PyBullet's viewer on Linux draws with OpenGL through GLX; on an X server without it its GUI
    thread prints "Error in gladLoadGLX" and calls ``exit``, which hangs the process for good
    while the main thread holds the GIL in ``connect`` (an Xvfb started with ``-extension
    GLX``: ``workbench replay`` hung until killed), so the viewer asks first.

    The rest of the Success reply is read (7 more bytes of its head, whose CARD16 at offset 6
    is the length of what follows in 4-byte units), then the request is sent: opcode 98, a
    unused byte, its length in 4-byte units (CARD16), the name's length (CARD16), two unused
    bytes, the name padded to 4 bytes — little-endian, as the setup request said. The reply is
    32 bytes: 1 (Reply), …, ``present`` (BOOL) at offset 8.
    """
    head = _recv_exact(sock, 7, deadline)
    if head is None:
        return None
    if _recv_exact(sock, 4 * int.from_bytes(head[5:7], "little"), deadline) is None:
        return None
    body = name + bytes(-len(name) % 4)
    request = bytes([_X_QUERY_EXTENSION, 0]) + (2 + len(body) // 4).to_bytes(2, "little")
    request += len(name).to_bytes(2, "little") + bytes(2) + body
    try:
        sock.settimeout(max(deadline - time.monotonic(), 1e-3))
        sock.sendall(request)
    except OSError:
        return None
    reply = _recv_exact(sock, 32, deadline)
    if reply is None or reply[0] != 1:
        return None
    return bool(reply[8])


def _recv_exact(sock: socket.socket, n: int, deadline: float) -> bytes | None:
    """``n`` bytes from ``sock``, or None when they do not all come before ``deadline``."""
    out = b""
    while len(out) < n:
        try:
            sock.settimeout(max(deadline - time.monotonic(), 1e-3))
            chunk = sock.recv(min(n - len(out), 1 << 16))
        except OSError:  # timeouts included
            return None
        if not chunk:
            return None
        out += chunk
    return out


def _x_answer(sock: socket.socket, request: bytes, deadline: float) -> int | None:
    """Send the setup ``request`` on the connected ``sock``; the first byte of the answer,
    :data:`_HUNG_UP` when the peer closes the connection first, or None when nothing comes
    before ``deadline`` (``time.monotonic()``)."""
    try:
        sock.settimeout(max(deadline - time.monotonic(), 1e-3))
        sock.sendall(request)
        sock.settimeout(max(deadline - time.monotonic(), 1e-3))
        first = sock.recv(1)
    except (BrokenPipeError, ConnectionResetError):
        return _HUNG_UP
    except OSError:  # timeouts included
        return None
    return first[0] if first else _HUNG_UP

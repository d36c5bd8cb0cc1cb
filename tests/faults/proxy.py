"""A loopback TCP proxy in front of a store, for tests that break the way
to it: stall it (pause forwarding), cut every connection, or keep it shut
(connections refused) until the test opens it."""

from __future__ import annotations

import socket
import threading


class Proxy:
    """Forwards each connection to `target`: a port on 127.0.0.1, or a unix
    socket's path. Listens at once, or (`opened=False`) only from `open()`:
    until then its port refuses connections, as a store that is down."""

    def __init__(self, target: int | str, *, opened: bool = True) -> None:
        self.target = target
        # Bound now, listening from open(): until then a connection is refused,
        # and the port is this proxy's all along.
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.flowing = threading.Event()  # cleared: forwarding stalls (pause, resume)
        self.flowing.set()
        self.closing = False
        self.sockets: set[socket.socket] = set()
        self.lock = threading.Lock()
        if opened:
            self.open()

    def open(self) -> None:
        self.listener.listen()
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def _upstream(self) -> socket.socket:
        if isinstance(self.target, str):
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.settimeout(5)
            upstream.connect(self.target)
        else:
            upstream = socket.create_connection(("127.0.0.1", self.target), timeout=5)
        upstream.settimeout(None)
        return upstream

    def _accept(self, listener: socket.socket) -> None:
        while not self.closing:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = self._upstream()
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                self.flowing.wait()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
                with self.lock:
                    self.sockets.discard(s)

    def pause(self) -> None:
        """Stall every connection: what arrives is held, not forwarded."""
        self.flowing.clear()

    def resume(self) -> None:
        self.flowing.set()

    def cut(self) -> None:
        with self.lock:
            victims = list(self.sockets)
        for s in victims:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.closing = True
        self.flowing.set()  # (a stalled pump goes on, to find its sockets closed)
        self.listener.close()
        self.cut()

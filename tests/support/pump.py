"""A virtual clock moved by a thread: real clients need time to pass while a test drives failures with it."""

from __future__ import annotations

import threading

from controller.embedded import ServerThread

#: The pump: this many clock ms every PUMP_WALL_S of wall time (half speed).
PUMP_MS = 50
PUMP_WALL_S = 0.1


class Pump:
    """Moves ``server``'s virtual clock ``step_ms`` every ``wall_s`` seconds of wall time until stopped."""

    def __init__(self, server: ServerThread, step_ms: int = PUMP_MS, wall_s: float = PUMP_WALL_S) -> None:
        self.server = server
        self.step_ms = step_ms
        self.wall_s = wall_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="clock-pump", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.wall_s):
            self.server.advance(self.step_ms)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

"""A minimal MLPerf MLLOG emitter (no dependencies).

Writes one event a line, as mlperf_logging does:
:::MLLOG {"namespace": "", "time_ms": ..., "event_type": ..., "key": ..., "value": ..., "metadata": {...}}
"""
import json
import os
import sys
import time

POINT_IN_TIME = "POINT_IN_TIME"
INTERVAL_START = "INTERVAL_START"
INTERVAL_END = "INTERVAL_END"


class Emitter:
    def __init__(self, path=None, echo=True):
        self.path = path
        self.echo = echo
        self._f = open(path, "a", buffering=1) if path else None

    def _emit(self, event_type, key, value=None, metadata=None):
        frame = sys._getframe(2)
        meta = {"file": os.path.basename(frame.f_code.co_filename), "lineno": frame.f_lineno}
        meta.update(metadata or {})
        line = ":::MLLOG " + json.dumps({
            "namespace": "",
            "time_ms": int(time.time() * 1000),
            "event_type": event_type,
            "key": key,
            "value": value,
            "metadata": meta,
        })
        if self._f:
            self._f.write(line + "\n")
            self._f.flush()
        if self.echo:
            print(line, flush=True)

    def event(self, key, value=None, metadata=None):
        self._emit(POINT_IN_TIME, key, value, metadata)

    def start(self, key, value=None, metadata=None):
        self._emit(INTERVAL_START, key, value, metadata)

    def end(self, key, value=None, metadata=None):
        self._emit(INTERVAL_END, key, value, metadata)

    def close(self):
        if self._f:
            self._f.close()
            self._f = None

"""python -m transformer_trace"""

import os
import sys
import threading

# sys.flags.safe_path (-P, PYTHONSAFEPATH) is new in Python 3.11; before it, -m always puts the folder first
if not getattr(sys.flags, "safe_path", False) and sys.path and sys.path[0] in ("", os.getcwd()):
    # `python -m` put the folder it runs in first: a student's traceback.py or json.py there would be imported in
    # place of the standard library's. Last, it still serves what only it has.
    sys.path.append(sys.path.pop(0))

from transformer_trace.cli import main  # noqa: E402

code = main()
if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
    # A traced script's thread still running after --timeout (or after the script failed): the report is written,
    # and nothing of the command may outlive it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 1)
sys.exit(code)

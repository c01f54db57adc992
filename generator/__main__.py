"""python -m transformer_trace"""

import os
import sys
import threading

from transformer_trace.cli import main

code = main()
if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
    # A traced script's thread still running after --timeout (or after the script failed): the report is written,
    # and nothing of the command may outlive it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 1)
sys.exit(code)

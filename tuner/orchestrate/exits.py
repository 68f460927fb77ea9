"""How a process that runs tuner ends: an exit code and one line, never a library's traceback.

Bad input is 2 (``ConfigError``); a signal is 130 or 143; a storage lost or a full disk is the
code its line names (tuner/study/storage/storage_errors.py). The command line (tuner/cli/) and a
worker process of `tuner run --workers N` (tuner/orchestrate/child.py) end the same way.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

from tuner.errors import ConfigError
from tuner.orchestrate.logs import quiet_failed_trials
from tuner.signals import exit_code
from tuner.study.storage import storage_errors


def guarded(call: Callable[[], int], verbose: bool = False) -> int:
    """Run ``call`` with the libraries' logs quieted (``verbose``: the first failure's traceback is
    shown); returns its exit code, or the code of what stopped it, after one line on stderr."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    quiet_failed_trials(verbose=verbose)
    storage_errors.quiet_storage_logs(verbose)
    try:
        return call()
    except ConfigError as err:
        print(f"tuner: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        print(f"tuner: {err or 'interrupted'}", file=sys.stderr)
        return exit_code(err)
    except Exception as err:
        failed = storage_errors.failure_line(err)  # a storage lost, a full disk: one line, never a library's traceback
        if failed is None:
            raise
        print(f"tuner: error: {failed[0]}", file=sys.stderr)
        return failed[1]

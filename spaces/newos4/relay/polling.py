"""Polling the runs in flight: every run at once, on a few threads, none asked about twice."""
import concurrent.futures

from .hermes_client import HermesUnreachable


class RunPoller:
    """GETs runs on a few threads; `poll` waits for them at most `wait_s` (None: for all).

    A poll still waiting for Hermes when `poll` returns is left to finish, and its answer is
    the one a later `poll` of that run gets: a run is never asked about twice at once, so one
    run whose polls hang holds one thread, not one per pass, and delays nobody else's answer.
    """

    def __init__(self, client, *, threads):
        self._client = client
        self._pool = concurrent.futures.ThreadPoolExecutor(threads,
                                                           thread_name_prefix="relay-poll")
        self._pending = {}  # run id -> Future of its HermesAnswer or HermesUnreachable

    def poll(self, run_ids, wait_s=None):
        """{run id: HermesAnswer or HermesUnreachable} for the runs that answered in time."""
        for run_id in run_ids:
            if run_id not in self._pending:
                self._pending[run_id] = self._pool.submit(self._get, run_id)
        concurrent.futures.wait([self._pending[r] for r in run_ids], timeout=wait_s)
        answered = {r: self._pending.pop(r).result() for r in run_ids if self._pending[r].done()}
        for run_id in [r for r, f in self._pending.items() if f.done()]:
            del self._pending[run_id]  # a run nobody follows any more
        return answered

    def close(self):
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _get(self, run_id):
        try:
            return self._client.get_run(run_id)
        except HermesUnreachable as exc:
            return exc

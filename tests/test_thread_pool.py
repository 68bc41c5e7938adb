"""ThreadPool: input order, errors, and fresh threads for every call."""

import threading

import pytest
from transnli.generator.checks.base import ThreadPool


@pytest.mark.parametrize(("threads", "fresh"), [(1, False), (2, False), (1, True), (2, True)])
def test_results_keep_input_order_and_errors_reach_the_caller(threads, fresh):
    pool = ThreadPool(threads, "test", fresh_threads=fresh)
    assert pool.map(lambda x: x * 10, range(20)) == [x * 10 for x in range(20)]

    def fn(x):
        if x == 3:
            raise ValueError("bad item 3")
        return x

    with pytest.raises(ValueError, match="bad item 3"):
        pool.map(fn, [1, 2, 3, 4])
    assert pool.map(fn, [1, 2]) == [1, 2]  # still usable
    pool.close()


def test_fresh_threads_end_with_each_call_and_never_use_the_callers_thread():
    # For native libraries that keep memory per thread until it ends (link-grammar).
    for threads in (1, 2):
        pool = ThreadPool(threads, "test", fresh_threads=True)
        before = threading.active_count()
        seen = set()
        for _ in range(3):
            pool.map(lambda x, seen=seen: seen.add(threading.current_thread()), range(8))
            assert threading.active_count() == before
        assert threading.main_thread() not in seen
        assert all(not t.is_alive() for t in seen)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_one_at_a_time_items_never_run_beside_each_other(threads):
    # link-grammar's long sentences: the peak is one long parse, not one per thread.
    import time

    pool = ThreadPool(threads, "test", fresh_threads=True)
    lock = threading.Lock()
    running, overlaps, light_threads = [0], [], set()

    def fn(x):
        heavy = x % 3 == 0
        if heavy:
            with lock:
                running[0] += 1
                overlaps.append(running[0])
        else:
            light_threads.add(threading.current_thread())
        time.sleep(0.002)
        if heavy:
            with lock:
                running[0] -= 1
        return x * 10

    items = list(range(30))
    assert pool.map(fn, items, one_at_a_time=lambda x: x % 3 == 0) == [x * 10 for x in items]
    assert max(overlaps) == 1 and len(overlaps) == 10
    if threads > 1:
        assert len(light_threads) >= 2  # the others do not wait for the long ones

    def failing(x):
        if x == 6:
            raise ValueError("bad item 6")
        return x

    with pytest.raises(ValueError, match="bad item 6"):
        pool.map(failing, items, one_at_a_time=lambda x: x % 3 == 0)

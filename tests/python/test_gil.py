"""The GIL is released while podsim compiles and simulates: a second Python
thread makes progress during a long run. The main thread samples the clock
while the run goes on in a worker; holding the GIL through the C++ call
would leave one gap as long as the run (the test would fail)."""

import threading
import time

import podsim

# A compile of about two seconds (MoE, 128 devices), then the simulation.
LONG = "workloads/moe_37b_128.yaml"


def largest_gap_while(call):
    """(seconds `call` took in a worker thread, the largest gap between the main
    thread's clock samples meanwhile)."""
    finished = threading.Event()
    times = {}

    def work():
        times["start"] = time.monotonic()
        call()
        times["end"] = time.monotonic()
        finished.set()

    worker = threading.Thread(target=work)
    samples = [time.monotonic()]
    worker.start()
    while not finished.is_set():
        samples.append(time.monotonic())
        time.sleep(0.001)
    worker.join()
    return times["end"] - times["start"], max(b - a for a, b in zip(samples, samples[1:]))


def test_the_detector_sees_a_held_gil():
    # sum(range(n)) is one C call that keeps the GIL: one gap of its length.
    run_s, gap = largest_gap_while(lambda: sum(range(20_000_000)))
    assert gap > run_s / 2, (gap, run_s)


def test_a_second_thread_progresses_during_a_run():
    run_s, gap = largest_gap_while(lambda: podsim.run(LONG))
    assert run_s > 0.5, "the run is too short to show anything"
    # A held GIL shows as one gap of about run_s; released, the gaps are the
    # interpreter's switch interval and scheduling noise.
    assert gap < run_s / 3, (gap, run_s)


def test_two_threads_take_turns_on_the_one_kernel():
    # The SystemC kernel is one per process: two threads' runs are serialised
    # and both give the single-threaded report.
    expected = podsim.run("workloads/small.yaml").to_json()
    results = [None, None]

    def work(i):
        results[i] = podsim.run("workloads/small.yaml").to_json()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected, expected]

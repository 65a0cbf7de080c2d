"""The GIL is released while podsim compiles and simulates: a second Python
thread makes progress during a long run. The main thread samples the clock
while the run goes on in a worker; holding the GIL through the C++ call
would leave one gap as long as the run (the test would fail)."""

import threading
import time

import podsim

# Full fidelity on 128 devices: about a second.
LONG = "workloads/maxtext_32b_v5p_128.yaml"


def test_a_second_thread_progresses_during_a_run():
    finished = threading.Event()
    times = {}

    def work():
        times["start"] = time.monotonic()
        podsim.run(LONG, fidelity="full")
        times["end"] = time.monotonic()
        finished.set()

    worker = threading.Thread(target=work)
    samples = [time.monotonic()]
    worker.start()
    while not finished.is_set():
        samples.append(time.monotonic())
        time.sleep(0.001)
    worker.join()
    run_s = times["end"] - times["start"]
    largest_gap = max(b - a for a, b in zip(samples, samples[1:]))
    assert run_s > 0.3, "the run is too short to show anything"
    # A held GIL shows as one gap of about run_s; released, the gaps are the
    # interpreter's switch interval and scheduling noise.
    assert largest_gap < run_s / 3, (largest_gap, run_s)
    assert len(samples) > 50


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

"""Warnings and log records kept per thread (sss_viewer._thread_warnings), with real threads in the orders that
``warnings.catch_warnings`` gets wrong."""

from __future__ import annotations

import logging
import threading
import warnings

import pytest

from sss_viewer._thread_warnings import quiet_log_records, recorded_warnings
from tests.fixtures.threads import Steps, run_threads


def messages(caught) -> list[str]:
    return [str(w.message) for w in caught]


def test_blocks_left_in_the_order_they_were_entered_keep_their_own_warnings():
    """A enters, B enters, A leaves, then B warns: B records it (catch_warnings hands it to A's old hook)."""
    steps = Steps("a in", "b in", "a out")
    lists = {}

    def a():
        with recorded_warnings() as caught:
            steps.done("a in")
            steps.wait("b in")
        lists["a"] = caught
        steps.done("a out")

    def b():
        steps.wait("a in")
        with recorded_warnings() as caught:
            steps.done("b in")
            steps.wait("a out")
            warnings.warn("from b", UserWarning, stacklevel=1)
        lists["b"] = caught

    filters, hook = list(warnings.filters), warnings.showwarning
    run_threads(a, b)
    assert messages(lists["a"]) == []
    assert messages(lists["b"]) == ["from b"]
    assert warnings.filters == filters  # nothing left behind
    assert warnings.showwarning is hook


def test_a_warning_goes_to_the_block_of_the_thread_that_raised_it():
    """A warns while B, which entered later, is still open: A's list gets it, not B's."""
    steps = Steps("a in", "b in", "a warned")
    lists = {}

    def a():
        with recorded_warnings() as caught:
            steps.done("a in")
            steps.wait("b in")
            warnings.warn("from a", UserWarning, stacklevel=1)
            steps.done("a warned")
        lists["a"] = caught

    def b():
        steps.wait("a in")
        with recorded_warnings() as caught:
            steps.done("b in")
            steps.wait("a warned")
        lists["b"] = caught

    run_threads(a, b)
    assert messages(lists["a"]) == ["from a"]
    assert messages(lists["b"]) == []


def test_a_thread_outside_every_block_has_its_warnings_filtered_as_before():
    """While another thread's block is open: shown, ignored or raised as the other filters say."""
    steps = Steps("block open", "warned")
    lists, raised = {}, []

    def inside():
        with recorded_warnings() as caught:
            steps.done("block open")
            steps.wait("warned")
        lists["inside"] = caught

    def outside():
        steps.wait("block open")
        try:
            warnings.warn("from outside", UserWarning, stacklevel=1)
            warnings.warn("noise from outside", UserWarning, stacklevel=1)
            warnings.warn("not a file to read", DeprecationWarning, stacklevel=1)
            warnings.warn("from this module only", FutureWarning, stacklevel=1)
            try:
                warnings.warn("an error from outside", RuntimeWarning, stacklevel=1)
            except RuntimeWarning as exc:
                raised.append(str(exc))
        finally:
            steps.done("warned")

    with warnings.catch_warnings(record=True) as shown:  # the hook in place before any block (this thread only runs)
        warnings.simplefilter("always")
        warnings.filterwarnings("error", category=RuntimeWarning)
        warnings.filterwarnings("ignore", message="noise")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning, module="some.other.module")
        run_threads(inside, outside)
    assert messages(lists["inside"]) == []
    assert messages(shown) == ["from outside", "from this module only"]
    assert raised == ["an error from outside"]


def test_repeats_are_recorded_and_an_error_filter_does_not_raise_inside_a_block():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with recorded_warnings() as caught:
            for _ in range(3):
                warnings.warn("same place, same text", RuntimeWarning, stacklevel=1)
        with pytest.raises(RuntimeWarning):  # the error filter is back after the block
            warnings.warn("after the block", RuntimeWarning, stacklevel=1)
    assert messages(caught) == ["same place, same text"] * 3


def test_nested_blocks_the_inner_one_records_and_the_outer_gets_the_rest():
    with recorded_warnings() as outer:
        warnings.warn("first", UserWarning, stacklevel=1)
        with recorded_warnings() as inner:
            warnings.warn("second", UserWarning, stacklevel=1)
        warnings.warn("third", UserWarning, stacklevel=1)
    assert messages(outer) == ["first", "third"]
    assert messages(inner) == ["second"]


def test_a_block_left_by_an_exception_removes_what_it_installed():
    filters, hook = list(warnings.filters), warnings.showwarning
    with pytest.raises(KeyError), recorded_warnings():
        raise KeyError("x")
    assert warnings.filters == filters
    assert warnings.showwarning is hook


def test_many_threads_overlapping_at_random_each_keep_exactly_their_own():
    n_threads, rounds = 8, 50
    barrier = threading.Barrier(n_threads)
    results: dict[int, list[list[str]]] = {}

    def worker(index: int):
        own = []
        barrier.wait(10)
        for round_ in range(rounds):
            with recorded_warnings() as caught:
                warnings.warn(f"{index}:{round_}", UserWarning, stacklevel=1)
            own.append(messages(caught))
        results[index] = own

    filters, hook = list(warnings.filters), warnings.showwarning
    run_threads(*[lambda i=i: worker(i) for i in range(n_threads)])
    for index in range(n_threads):
        assert results[index] == [[f"{index}:{r}"] for r in range(rounds)]
    assert warnings.filters == filters
    assert warnings.showwarning is hook


def test_quiet_log_records_drops_only_the_quiet_threads_records(caplog):
    log = logging.getLogger("sss_viewer.tests.quiet")
    steps = Steps("quiet", "logged")

    def quiet():
        with quiet_log_records(log):
            steps.done("quiet")
            log.warning("from the quiet thread")
            steps.wait("logged")
        log.warning("quiet thread, after its block")

    def loud():
        steps.wait("quiet")
        log.warning("from the other thread")
        steps.done("logged")

    with caplog.at_level(logging.WARNING, logger=log.name):
        run_threads(quiet, loud)
    said = [r.getMessage() for r in caplog.records if r.name == log.name]
    assert sorted(said) == ["from the other thread", "quiet thread, after its block"]
    assert not log.disabled


def test_an_entry_of_ours_another_librarys_catch_warnings_put_back_is_removed_by_the_next_block(monkeypatch):
    """Y's block open; X (say HoloViews on the server thread) enters catch_warnings, Y's block ends, X's ends and
    puts back the state it saved, our "always" entry and hook among it. The next block to end leaves none of ours."""
    steps = Steps("y in", "x in", "y out")
    filters, hook = list(warnings.filters), warnings.showwarning

    def y():
        with recorded_warnings():
            steps.done("y in")
            steps.wait("x in")
        steps.done("y out")

    def x():
        steps.wait("y in")
        with warnings.catch_warnings():
            steps.done("x in")
            steps.wait("y out")

    run_threads(y, x)
    assert warnings.filters != filters  # X put our entry back: the stale state this test is about
    with recorded_warnings() as caught:
        warnings.warn("next read", UserWarning, stacklevel=1)
    assert messages(caught) == ["next read"]
    assert warnings.filters == filters
    try:  # X also put back our hook: a warning outside any block is still shown as the filters say
        shown = []
        monkeypatch.setattr(warnings, "_showwarnmsg_impl", shown.append)  # where Python's own hook writes
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn("outside any block", UserWarning, stacklevel=1)
        assert [str(m.message) for m in shown] == ["outside any block"]
    finally:
        warnings.showwarning = hook

"""A generator made in the frame and left paused: the frame is compiled
unless freeing the generator would run the program's code (a ``finally``,
a ``with`` exit, an ``except`` that catches GeneratorExit).  A Sequence's
``__iter__`` (``try: ... except IndexError``) left paused by a ``return``
inside a ``for`` loop is the common case (transformers' caches)."""
import collections.abc

import torch

import armature


class _Seq(collections.abc.Sequence):
    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)


def _first_scaled(x, seq):
    for v in seq:
        return x * v      # Sequence.__iter__ stays paused inside try/except IndexError


def _paused(handler):
    log = []

    def key_error():
        try:
            yield 1
        except IndexError:
            log.append("index")
        except KeyError:
            log.append("key")

    def base_exception():
        try:
            yield 1
        except IndexError:
            log.append("index")
        except BaseException:
            log.append("caught")
            raise

    def generator_exit():
        try:
            yield 1
        except GeneratorExit:
            log.append("caught")
            raise

    return {"key": key_error, "base": base_exception, "exit": generator_exit}[handler], log


def test_sequence_iterator_left_paused_compiles():
    x, seq = torch.ones(2), _Seq([2.0, 3.0])
    report = armature.explain(_first_scaled)(x, seq)
    assert report.graph_count == 1 and not report.fallbacks
    torch.testing.assert_close(armature.compile(_first_scaled)(x, seq), _first_scaled(x, seq))


def _leave_paused(x, gen):
    it = gen()
    next(it)
    return x + 1


def test_handlers_that_catch_generator_exit_keep_the_frame_as_python():
    for handler, runs_code in (("key", False), ("base", True), ("exit", True)):
        gen, log = _paused(handler)
        report = armature.explain(_leave_paused)(torch.ones(2), gen)
        assert bool(report.fallbacks) == runs_code, (handler, report.fallbacks)
        # compiled or not, freeing the generator does what eager does
        log.clear()
        armature.compile(_leave_paused)(torch.ones(2), gen)
        compiled_log = list(log)
        log.clear()
        _leave_paused(torch.ones(2), gen)
        assert compiled_log == log, handler

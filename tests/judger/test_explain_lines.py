"""What `--explain` prints (judger/explain.py) for a conformance case with the handout's exact cycles: each
cause a line holds up others through is said apart, with its own waiting lines; job 0's critical path says
it is part of the launch; the legend names every word the lines use."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kdt"))  # the shared conformance helpers
from conformance import run_case  # noqa: E402
from judger.explain import explanation, format_explanation, legend_lines  # noqa: E402


def test_a_line_that_holds_up_others_through_several_causes_says_each_apart():
    """c20 (double-buffered matmul, 4 jobs on 2 SMs, 9,404 cycles): the matmul of line 34 holds up the next
    load into its operand (WAR), its own next accumulate (WAW) and the store of its result (RAW). A fresh
    reader took the store for a WAR wait when the causes were pooled under the largest one."""
    said = format_explanation(explanation(run_case("c20_double_buffered_matmul")["profile"]))
    assert said[1].startswith("    critical path of job 0 (4,702 of the launch's 9,404 cycles: an SM runs its jobs "
                              "one after another): line 34 matmul 87.1%")
    assert said[3] == ("    line 34 (matmul) holds up others 16,368 cycles, summed over the 4 jobs: line 32 waits for "
                       "its output to be read (war 8,184); line 34 waits for its output to be written (waw 4,092); "
                       "line 35 waits for its input to be written (raw 4,092)")
    assert said[4] == ("    line 29 (load) holds up others 1,188 cycles, summed over the 4 jobs: line 34 waits for its "
                       "input to be written (raw 1,188)")


def test_the_legend_names_every_word_the_lines_use():
    legend = " ".join(legend_lines())
    for word in ("raw = ", "war = ", "waw = ", "unit = ", "bound = ", "ISU = ", "'holds up others'",
                 "critical path"):
        assert word in legend, word
    assert all(len(line) <= 110 for line in legend_lines())

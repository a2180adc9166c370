"""The z3 problem of mtheap-bench: n queens as integer constraints (QF_LIA), three `distinct`
over n terms each.  z3 builds and drops terms, clauses and theory lemmas by the million while
it searches (about 1.3 million mallocs at n = 28), and its search does not depend on the
allocator: every allocator gets the same answer by the same path.  The answer is checked: a
placement z3 calls a model must really be one.

    python3 z3_queens.py N > problem.smt2     # write the problem
"""
import re
import sys


def problem(n):
    out = ["(set-option :produce-models true)", "(set-logic QF_LIA)"]
    out += ["(declare-const q%d Int)" % i for i in range(n)]
    out += ["(assert (and (>= q%d 0) (< q%d %d)))" % (i, i, n) for i in range(n)]
    out.append("(assert (distinct %s))" % " ".join("q%d" % i for i in range(n)))
    out.append("(assert (distinct %s))" % " ".join("(+ q%d %d)" % (i, i) for i in range(n)))
    out.append("(assert (distinct %s))" % " ".join("(- q%d %d)" % (i, i) for i in range(n)))
    out += ["(check-sat)", "(get-value (%s))" % " ".join("q%d" % i for i in range(n))]
    return "\n".join(out) + "\n"


def check(n, output):
    """None if z3's output is 'sat' with a valid placement of n queens, else what is wrong."""
    lines = output.strip().splitlines()
    if not lines or lines[0].strip() != "sat":
        return "z3 answered %r, expected sat" % (lines[0].strip() if lines else "")
    vals = dict((int(i), int(v)) for i, v in re.findall(r"\(q(\d+)\s+(\d+)\)", output))
    if sorted(vals) != list(range(n)):
        return "model has %d of %d queens" % (len(vals), n)
    q = [vals[i] for i in range(n)]
    if any(not 0 <= x < n for x in q):
        return "a queen off the board: %s" % q
    for name, keys in (("column", q), ("diagonal", [x + i for i, x in enumerate(q)]),
                       ("anti-diagonal", [x - i for i, x in enumerate(q)])):
        if len(set(keys)) != n:
            return "two queens share a %s: %s" % (name, q)
    return None


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 4:
        sys.exit("usage: z3_queens.py N   (N >= 4)")
    sys.stdout.write(problem(int(sys.argv[1])))

"""Statistics and parsing of the workloads' RESULT lines.  No numpy: the driver runs on the
bare stdlib, matplotlib is needed only for the plots."""

import math
import re

_TOKEN = re.compile(r"(\w[\w.-]*)=(\S*)")


class ParseError(ValueError):
    pass


def median(xs):
    xs = sorted(xs)
    if not xs:
        raise ValueError("median of an empty sequence")
    n = len(xs)
    mid = n // 2
    return xs[mid] if n % 2 else (xs[mid - 1] + xs[mid]) / 2.0


def geomean(xs):
    xs = list(xs)
    if not xs:
        raise ValueError("geomean of an empty sequence")
    if any(x <= 0 for x in xs):
        raise ValueError("geomean needs positive values")
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def spread(xs):
    """(min, max) of the values."""
    xs = list(xs)
    if not xs:
        raise ValueError("spread of an empty sequence")
    return min(xs), max(xs)


def _convert(v):
    try:
        if re.fullmatch(r"[+-]?\d+", v):
            return int(v)
        return float(v)
    except ValueError:
        return v


REQUIRED = ("workload", "threads", "metric", "value", "unit")


def parse_result_line(line):
    """Parses 'RESULT k=v k=v ...' into a dict; numbers become int/float."""
    line = line.strip()
    if not line.startswith("RESULT "):
        raise ParseError("not a RESULT line: %r" % line[:80])
    fields = {}
    for tok in line[len("RESULT "):].split():
        m = _TOKEN.fullmatch(tok)
        if not m:
            raise ParseError("malformed field %r in %r" % (tok, line[:120]))
        fields[m.group(1)] = _convert(m.group(2))
    missing = [k for k in REQUIRED if k not in fields]
    if missing:
        raise ParseError("RESULT line lacks %s: %r" % (", ".join(missing), line[:120]))
    if not isinstance(fields["value"], (int, float)):
        raise ParseError("RESULT value is not a number: %r" % fields["value"])
    fields["value"] = float(fields["value"])
    fields.setdefault("better", "lower")
    if fields["better"] not in ("lower", "higher"):
        raise ParseError("better= must be lower or higher, got %r" % fields["better"])
    return fields


def parse_output(text):
    """All RESULT lines of a workload's stdout, and its FAIL lines."""
    results, fails = [], []
    for line in text.splitlines():
        if line.startswith("RESULT "):
            results.append(parse_result_line(line))
        elif line.startswith("FAIL "):
            fails.append(line[len("FAIL "):].strip())
    return results, fails


def ratio(value, ref, better):
    """How much worse value is than ref: 1.0 = same, 2.0 = twice as slow / half the rate."""
    if value is None or ref is None or value < 0 or ref < 0:
        return None
    worse, base = (value, ref) if better == "lower" else (ref, value)
    if base == 0:
        # A count of zero is a legitimate best (e.g. no mmap calls at all).
        return 1.0 if worse == 0 else math.inf
    return worse / base

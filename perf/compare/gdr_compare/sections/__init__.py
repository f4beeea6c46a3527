"""One module per section; each run_<section>(session) measures its rows into session.results.
rc_verbs and gdr_rc (or the two tools of a section) run interleaved, A B A B ..., --pairs times
(measure.Results.interleave), so that both sides of a pair see the same moment of a host whose
load drifts (a TCG guest's speed follows it closely)."""

from . import coll, cost, raw, ucx, wrapper

RUNNERS = {"uct": ucx.run_uct, "ucp": ucx.run_ucp, "raw": raw.run_raw,
           "wrapper": wrapper.run_wrapper, "coll": coll.run_coll,
           "cost": cost.run_cost}

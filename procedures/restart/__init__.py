"""The rolling restart's procedure: which brokers in which batches (plan.py), the gates before
each batch (gates.py), the roll engine (roll.py) and its report (report.py)."""

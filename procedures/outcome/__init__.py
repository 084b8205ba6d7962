"""How a run ended, in one contract every runbook fills (:mod:`.contract`), and everything said from it (:mod:`.render`)."""

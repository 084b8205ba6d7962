"""The seeded randomized fault campaign: one decommission per seed under one injected fault,
checked afterwards with plain kazoo (see :mod:`tests.campaign.runner`)."""

"""The run folder's books: one job's life in its directory (:mod:`zoo.run.job`), entered once per job.

Its claim and lock (:mod:`~zoo.run.claim`), the resume plan (:mod:`~zoo.run.resume`), the record (``summary.json``,
its segments and costs: :mod:`~zoo.run.record`), signals (:mod:`~zoo.run.interruptions`, :mod:`~zoo.run.ranks`),
what a run writes to be used again (:mod:`~zoo.run.provenance`, :mod:`~zoo.run.identity`), its checkpoints as files
(:mod:`~zoo.run.checkpoints`), the trackers' view of it (:mod:`~zoo.run.tracking`), its outputs and printed result
(:mod:`~zoo.run.summary`) and the names of its files (:mod:`~zoo.run.layout`). The record and the signals' handler
are Lightning callbacks, but nothing here builds or runs a Trainer: that is :mod:`zoo.training`, above this package
(which never imports it).
"""

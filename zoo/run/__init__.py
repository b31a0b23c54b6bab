"""The run folder's life: claim and lock, the resume plan, the record, signals, provenance and tracker identity.

Nothing here knows Lightning's training loop; :mod:`zoo.training` is the Lightning side and calls into this
package at the points where a run's books change.
"""

"""Readers and writers of evaluation file formats (TREC runs and qrels)."""

"""Generated data with ground truth: documents, customers, fingerprints, news pages."""

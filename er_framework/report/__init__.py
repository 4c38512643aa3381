"""report.html, drawn from report.json and the outputs of a run."""

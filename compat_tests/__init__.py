"""The stock-client compatibility matrix: drivers, the runner and the report (DESIGN.md section 7)."""

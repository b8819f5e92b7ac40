"""The class report: what a graded class got wrong, for the TA running a section.

One job per module: `collect` (the grader's verdicts and the gradebook, read back), `groups`
(failures per check, grouped by cause), `similarity` (answer cells near-identical across
students), `changes` (what moved since the previous report), `figures` (histograms), `tables`
(the CSV files), `render` (the HTML page), `build` (all of them, into `reports/`).
"""

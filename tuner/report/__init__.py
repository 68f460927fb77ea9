"""A study's report for the people who review it: data, figures, HTML, Markdown and JSON."""

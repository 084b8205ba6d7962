"""What the approver reads of a rehearsal: report.py."""

"""The batch book of the in-task batch runbooks (election, deletion, restart): book.py."""

"""The pieces of deploy/nats/check-permissions.py: the topology it expects (topology), one
connection per role doing what the Rust code does (role), and the checks themselves (checks)."""

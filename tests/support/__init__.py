"""Test doubles and helpers shared across the suite: placers loaded by file path, a raw-wire client."""

"""Evidence anyone can verify: signed receipts per call and a tamper-evident ledger.

    jcs       RFC 8785 canonical JSON: the bytes that are hashed and signed
"""

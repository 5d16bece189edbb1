"""Personal data in a call: detectors, the policy section that governs them, masking."""

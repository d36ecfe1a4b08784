"""FX graph construction with fake-tensor propagation."""

"""strata's own PyTorch reference implementation of DeepSeek-V4 (see reference/README.md)."""

"""What ships inside an FMU: the pythonfmu slave, its FMI 2.0 state table and status codes, the FMU state, the extensions (fence, PI controller), the C loader."""

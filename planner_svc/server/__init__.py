"""The gRPC server: thin servicers, error mapping, interceptors, health, reflection."""

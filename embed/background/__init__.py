"""The background embedding workers: the client, the worker process and the pipe between them."""

run tests/data/reliability/llama3-70b-64-shrink.yaml

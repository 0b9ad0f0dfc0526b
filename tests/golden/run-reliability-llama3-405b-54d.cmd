run tests/data/reliability/llama3-405b-16k-54d.yaml

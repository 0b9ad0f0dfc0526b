collective scenarios/mi300x-1node.yaml --op allreduce --dump-channels --format json

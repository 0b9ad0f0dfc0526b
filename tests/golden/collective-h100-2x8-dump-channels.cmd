collective scenarios/h100-2x8-200g.yaml --op allreduce --dump-channels

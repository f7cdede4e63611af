print("stackline-worker")

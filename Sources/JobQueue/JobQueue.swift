// JobQueue

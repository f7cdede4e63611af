import CElfUtils

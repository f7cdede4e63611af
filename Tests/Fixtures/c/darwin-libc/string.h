/* See stdio.h. */
unsigned long strlen(const char *);

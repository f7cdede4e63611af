// Master

WHO = 'student shlex'
def __getattr__(name):
    raise AttributeError('student module shlex has no ' + name)

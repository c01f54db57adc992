WHO = 'student zipfile'
def __getattr__(name):
    raise AttributeError('student module zipfile has no ' + name)

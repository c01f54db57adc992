WHO = 'student html'
def __getattr__(name):
    raise AttributeError('student module html has no ' + name)

# Tests owned by one area of the converter; included from CMakeLists.txt.

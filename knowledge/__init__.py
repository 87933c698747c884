# bundled knowledge base (a package only so that it ships in the wheel)

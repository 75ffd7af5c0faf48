import SynchroProtocol
print(ECMAScriptNumber.format(1e21))

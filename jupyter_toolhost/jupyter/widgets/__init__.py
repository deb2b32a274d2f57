"""Questions asked in the cell with ipywidgets, and the records they leave.

`widget_prompt` shows a widget in the asking cell and waits for its answer (every prompt
goes through it); `approval` is the `Approver` (Allow / Always allow / Deny, plans
included), `questions` the `QuestionAsker` for AskUserQuestion, `trust_prompt` the folder
trust question. `frontend` says whether anyone is there to click; `comm_ack` answers widget
messages while a cell awaits. ipywidgets is imported here, on the first question.
"""

// Tally form-submissions module (served as-is). Commented copy: forms.src.js
(function(){'use strict';var w=window,n='Form: Submission';if(w.tallyForms)return;w.tallyForms=1;
document.addEventListener('submit',function(e){try{var f=e.target,b=e.submitter,t=w.tally,o={props:{path:location.pathname}};
if(!(f.hasAttribute('novalidate')||b&&b.formNoValidate||f.checkValidity()))return;
if(t&&t.track)t.track(n,o);else{t=w.tally=t||{};(t.q=t.q||[]).push([n,o])}}catch(x){}},true)})();
